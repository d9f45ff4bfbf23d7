import type { InjectionToken } from '@ferrum/interfaces';
import type { DependencyContainer } from 'tsyringe';

/** Resolve a phantom-typed `@ferrum/interfaces` token with its type (tsyringe sees only a symbol). */
export function resolveToken<T>(container: DependencyContainer, token: InjectionToken<T>): T {
  return container.resolve<T>(token);
}

/** Every registration of a token, or none (tsyringe throws for unregistered tokens). */
export function resolveAllTokens<T>(container: DependencyContainer, token: InjectionToken<T>): T[] {
  return container.isRegistered(token, true) ? container.resolveAll<T>(token) : [];
}
