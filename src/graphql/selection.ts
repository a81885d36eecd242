import type { FieldNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql';

/**
 * Names of the fields a client selected below the current field, following `path` (e.g.
 * `['nodes']` then `['edges', 'node']` for a connection) through fragments and inline fragments.
 * Fields under `@include`/`@skip` count as selected: a superset is safe, it only costs a column.
 */
export function selectedFieldNames(info: GraphQLResolveInfo, ...paths: string[][]): Set<string> {
  const names = new Set<string>();
  const visit = (selectionSet: SelectionSetNode | undefined, path: readonly string[]) => {
    if (!selectionSet) return;
    for (const selection of selectionSet.selections) {
      if (selection.kind === 'InlineFragment') {
        visit(selection.selectionSet, path);
      } else if (selection.kind === 'FragmentSpread') {
        visit(info.fragments[selection.name.value]?.selectionSet, path);
      } else if (path.length === 0) {
        names.add(selection.name.value);
      } else if (selection.name.value === path[0]) {
        visit((selection as FieldNode).selectionSet, path.slice(1));
      }
    }
  };
  for (const node of info.fieldNodes) {
    for (const path of paths.length ? paths : [[]]) visit(node.selectionSet, path);
  }
  return names;
}
