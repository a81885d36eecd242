test('runs on a Node that MikroORM 7 supports (>= 22.17)', () => {
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  expect(major > 22 || (major === 22 && minor >= 17)).toBe(true);
});
