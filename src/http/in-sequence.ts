import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Several middleware as one layer of the router, run in order as the router would run them as
 * layers of their own: each goes on when the one before calls `next()`; an error (given to
 * `next`, thrown, or a rejected promise) leaves the sequence for the router's error handling.
 * Every request passes every layer of the app's router, and each layer costs it a dispatch
 * of its own (a match, a parameter pass, a URL trim under a mount path); a mounted sequence
 * (`app.use('/graphql', inSequence(...))`) is also matched against other paths once, not once per
 * middleware.
 */
export function inSequence(...handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let index = 0;
    const step = (error?: unknown) => {
      if (error) return next(error);
      if (index === handlers.length) return next();
      const handler = handlers[index++]!;
      try {
        const returned: unknown = handler(req, res, step);
        if (returned instanceof Promise) returned.then(undefined, (rejection: unknown) => step(rejection || new Error('Rejected promise')));
      } catch (thrown) {
        step(thrown);
      }
    };
    step();
  };
}
