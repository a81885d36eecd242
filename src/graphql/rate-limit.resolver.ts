import { Ctx, Field, Int, ObjectType, Query, Resolver } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { COST_PER_RATE_POINT } from './cost.js';
import type { Context } from './context.js';

@ObjectType({ description: `Where the caller's rate budget stands after this request was charged. A request draws points by its cost: at least 1, one per ${COST_PER_RATE_POINT} of cost (docs/graphql.md, "Limits"); the \`ratelimit-*\` response headers say the same.` })
export class RateLimit {
  @Field(() => Int, { description: 'The points this request drew from the budget.' })
  cost!: number;

  @Field(() => Int, { description: 'The points left in the budget until it resets.' })
  remaining!: number;

  @Field(() => DateTimeResolver, { description: 'When the budget is full again (the window ends).' })
  resetAt!: Date;

  @Field(() => Int, { description: 'The points the budget holds per window (RATE_LIMIT_PER_MINUTE a minute).' })
  limit!: number;
}

/** The caller's rate budget as it stands after this request; no rights beyond a credential that works. */
@Resolver()
export class RateLimitResolver {
  @Query(() => RateLimit, { description: 'The caller\'s rate budget after this request\'s charge: what the request cost, what remains and when it resets. Any authenticated credential (a user\'s keys and tokens share one budget).' })
  rateLimit(@Ctx() context: Context): RateLimit {
    const budget = context.rateBudget;
    // Every request over HTTP draws on its budget before it runs; only a subscription's events (which select no query field) run without.
    if (!budget) throw new Error('rateLimit was asked outside a request charged to a budget');
    const { remaining, resetSeconds, limit } = budget.decision;
    return { cost: budget.drawn, remaining, resetAt: new Date(Date.now() + resetSeconds * 1000), limit };
  }
}
