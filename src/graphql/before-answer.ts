/**
 * Work a request's resolvers leave for the moment its answer is known to go out: each face runs it
 * once the operation has executed and before it answers (POST /graphql when the answer carries data,
 * the REST and SCIM faces when the operation succeeded), so what must happen once per request (one
 * audit record naming everything shown) happens once however many fields asked for it, and never for
 * an answer that shows nothing. A task that fails fails the answer: nothing it guards is sent.
 */
export class BeforeAnswer {
  private readonly tasks: Array<() => Promise<void>> = [];

  /** `task` runs before every answer of the request from now on (a face may answer after several executions): it does only what is new since its last run. */
  add(task: () => Promise<void>): void {
    this.tasks.push(task);
  }

  async run(): Promise<void> {
    for (const task of this.tasks) await task();
  }
}
