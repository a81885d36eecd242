import { createSourceEventStream, execute, GraphQLError, type ExecutionArgs, type ExecutionResult, type FormattedExecutionResult } from 'graphql';
import { formatGraphQLError } from '../../graphql/errors.js';

/** Errors answered to a subscribe message, formatted as on POST /graphql. */
export function asGraphQLErrors(error: Error): GraphQLError[] {
  return [error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error })];
}

export function formatted(errors: readonly GraphQLError[]) {
  return errors.map((error) => formatGraphQLError(error.toJSON(), error));
}

/** A `next` message's payload, as graphql-ws sends it after `onNext` (errors formatted as on POST /graphql). */
export function nextPayload(result: ExecutionResult): FormattedExecutionResult {
  return result.errors ? { ...result, errors: formatted(result.errors) } : (result as FormattedExecutionResult);
}

/**
 * A subscription whose events are not grouped (its resolver builds its own stream): each event is
 * executed for it alone, as graphql-js' `subscribe` does. Ending it ends its source at once;
 * `fail` ends it with an error (graphql-ws sends it as the subscription's `error` message).
 */
export function executedEach(source: AsyncIterator<unknown>, args: ExecutionArgs): AsyncIterableIterator<ExecutionResult> & { fail(error: unknown): void } {
  let failure: { error: unknown } | undefined;
  const finish = async (): Promise<IteratorResult<ExecutionResult>> => {
    await source.return?.();
    return { value: undefined, done: true };
  };
  return {
    async next() {
      const event = await source.next();
      if (failure) throw failure.error;
      if (event.done) return { value: undefined, done: true };
      try {
        return { value: await execute({ ...args, rootValue: event.value }), done: false };
      } catch (error) {
        await source.return?.();
        throw error;
      }
    },
    return: finish,
    async throw(error: unknown) {
      await finish();
      throw error;
    },
    fail(error: unknown) {
      failure ??= { error };
      void source.return?.();
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** What a subscription's authorization answers: nothing when allowed, else the refusal (the domain error where there is one). */
export async function refusalOf(args: ExecutionArgs): Promise<unknown> {
  const source = await createSourceEventStream(args);
  if (Symbol.asyncIterator in source) {
    // Allowed: the stream the check opened is not the subscription's; it is released at once.
    await source[Symbol.asyncIterator]().return?.();
    return undefined;
  }
  const refusal = source.errors?.[0];
  return refusal ? (refusal.originalError ?? refusal) : undefined;
}

