import { describe, expect, test } from '@jest/globals';
import express from 'express';
import supertest from 'supertest';
import { corsAllowList } from './cors.js';

const APP_ORIGIN = 'http://127.0.0.1:5173';

function appAnsweringStepUp() {
  const app = express();
  app.use(corsAllowList([APP_ORIGIN]));
  app.post('/graphql', (_req, res) => {
    res.status(401).set('WWW-Authenticate', 'Bearer error="insufficient_user_authentication", max_age=600').json({ errors: [] });
  });
  return app;
}

describe('CORS for browser apps on the listed origins', () => {
  test('a browser app may read the bearer challenge of a 401, where a step-up names its max_age', async () => {
    const answer = await supertest(appAnsweringStepUp()).post('/graphql').set('Origin', APP_ORIGIN);
    expect(answer.status).toBe(401);
    expect(answer.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(answer.headers['access-control-expose-headers']!.split(/,\s*/)).toContain('www-authenticate');
  });

  test('another origin gets no CORS headers at all', async () => {
    const answer = await supertest(appAnsweringStepUp()).post('/graphql').set('Origin', 'http://127.0.0.1:9999');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    expect(answer.headers['access-control-expose-headers']).toBeUndefined();
  });
});
