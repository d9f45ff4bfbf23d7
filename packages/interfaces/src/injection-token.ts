/**
 * A DI token: a registered symbol carrying the type it resolves to as a phantom. Declared here without
 * importing tsyringe so that implementers depend on this package alone; tsyringe accepts symbols as tokens.
 */
export type InjectionToken<T> = symbol & { readonly __resolvesTo?: T };

/** Create the token `Symbol.for('@ferrum/interfaces:<name>')`, shared across duplicated package copies. */
export function defineToken<T>(name: string): InjectionToken<T> {
  return Symbol.for(`@ferrum/interfaces:${name}`) as InjectionToken<T>;
}

/** Version literal every pluggable interface carries; the engine rejects versions it does not know. */
export type SpecificationVersion = 'v1';
