import { invalidRequest, type OpenAIError } from './openai-error.js';

/** The parts of an Ajv error this formatter reads (Fastify compiles schemas with `verbose: true`). */
export interface SchemaError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly message?: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly parentSchema?: { readonly description?: string };
}

/** `/messages/0/role` → `messages[0].role` (the way OpenAI names nested parameters). */
function paramOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

/**
 * Turn Ajv's errors into one clear 400. A union that failed is described by its `description` (the
 * outermost one wins, Ajv reports it last); otherwise the first error says what was wrong.
 */
export function formatSchemaErrors(errors: readonly SchemaError[], dataVar: string): OpenAIError {
  const described = errors.findLast((e) => e.keyword === 'anyOf' && e.parentSchema?.description);
  const error = described ?? errors[0];
  let param = paramOf(error.instancePath);
  let message: string;
  if (error.keyword === 'required') {
    param = param ? `${param}.${String(error.params.missingProperty)}` : String(error.params.missingProperty);
    message = `${param} is required`;
  } else if (described) {
    message = `${param || dataVar} must be ${described.parentSchema?.description}`;
  } else {
    message = `${param || dataVar} ${error.message ?? 'is invalid'}`;
  }
  return invalidRequest(message, param || null);
}
