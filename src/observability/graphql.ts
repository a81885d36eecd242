import type { ApolloServerPlugin } from '@apollo/server';
import { getOperationAST, type ExecutionResult } from 'graphql';
import { apiErrors, graphqlOperationDuration, graphqlOperations, operationLabel } from './metrics.js';
import { activeSpan, describeOperationSpan, endOperationSpan, runInContext, startOperationSpan } from './tracing.js';

type Face = 'graphql' | 'rest';

function recordOperation(face: Face, type: string, operation: string, failed: boolean, started: bigint): void {
  const outcome = failed ? 'error' : 'success';
  graphqlOperations.inc({ face, type, operation, outcome });
  graphqlOperationDuration.observe({ face, operation, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
}

/** Counts, times and names `/graphql` operations, and counts their error codes. */
export function operationObservabilityPlugin<TContext extends object>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      const started = process.hrtime.bigint();
      const span = activeSpan();
      return {
        async willSendResponse({ operation, document, request, response }) {
          // A document that failed validation has no resolved operation, but its name is known.
          const definition = operation ?? (document ? getOperationAST(document, request.operationName) : undefined);
          const type = definition?.operation ?? 'unknown';
          const name = operationLabel(definition?.name?.value ?? request.operationName);
          const errors = response.body.kind === 'single' ? (response.body.singleResult.errors ?? []) : [];
          for (const error of errors) apiErrors.inc({ face: 'graphql', code: String(error.extensions?.code ?? 'UNKNOWN') });
          recordOperation('graphql', type, name, errors.length > 0, started);
          if (span) describeOperationSpan(span, type, name);
        },
      };
    },
  };
}

/** Runs one REST route's GraphQL operation under its own span, and counts and times it like `/graphql`'s. */
export async function observeRestOperation(type: string, name: string | undefined, run: () => Promise<ExecutionResult> | ExecutionResult): Promise<ExecutionResult> {
  const started = process.hrtime.bigint();
  const operation = operationLabel(name);
  const traced = startOperationSpan(`${type} ${operation}`);
  if (traced) describeOperationSpan(traced.span, type, operation);
  let failed = true;
  try {
    const result = traced ? await runInContext(traced.context, run) : await run();
    failed = Boolean(result.errors?.length);
    return result;
  } finally {
    recordOperation('rest', type, operation, failed, started);
    if (traced) endOperationSpan(traced.span, failed);
  }
}
