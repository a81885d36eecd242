/**
 * A record stores the names of the fields a change touched as REST names them (`job_title`): REST
 * presents them so, and GraphQL presents the schema's own names (`jobTitle`), so a client matches
 * a changed field to the field it reads. Stored names are lower snake case, so the two convert
 * both ways without loss.
 */
export function graphqlFieldName(stored: string): string {
  return stored.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

export function restFieldName(graphql: string): string {
  return graphql.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
