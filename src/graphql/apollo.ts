import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import type { GraphQLSchema } from 'graphql';
import type { Server } from 'node:http';
import type { Logger } from '../logging/logger.js';
import type { Context } from './context.js';
import { classifyError, formatGraphQLError } from './errors.js';
import { queryLimitRules, type QueryLimits } from './limits.js';

/** Logs what will be masked, with the request id that the masked error carries to the client. */
function maskedErrorLogging(logger: Logger): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ errors, contextValue }) {
          for (const error of errors) {
            if (classifyError(error).kind === 'internal') logger.error({ err: error.originalError ?? error, requestId: contextValue.requestId }, 'unhandled error in GraphQL operation');
          }
        },
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          for (const error of response.body.singleResult.errors ?? []) {
            if (error.extensions?.code === 'INTERNAL_SERVER_ERROR') (error.extensions as Record<string, unknown>).requestId = contextValue.requestId;
          }
        },
      };
    },
  };
}

export interface ApolloOptions {
  schema: GraphQLSchema;
  logger: Logger;
  httpServer: Server;
  introspection: boolean;
  landingPage: boolean;
  limits: QueryLimits;
  plugins?: ApolloServerPlugin<Context>[];
}

export function createApolloServer(options: ApolloOptions): ApolloServer<Context> {
  return new ApolloServer<Context>({
    schema: options.schema,
    introspection: options.introspection,
    csrfPrevention: true,
    // main.ts owns SIGTERM/SIGINT: it drains HTTP, stops Apollo, then closes the database.
    stopOnTerminationSignals: false,
    includeStacktraceInErrorResponses: false,
    validationRules: queryLimitRules(options.limits),
    formatError: formatGraphQLError,
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: options.httpServer }),
      options.landingPage ? ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false }) : ApolloServerPluginLandingPageDisabled(),
      maskedErrorLogging(options.logger),
      ...(options.plugins ?? []),
    ],
  });
}
