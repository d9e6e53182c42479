// The subset of jstat (CommonJS, no bundled types) that the twin uses.
declare module 'jstat' {
  const jStat: {
    chisquare: { inv(p: number, dof: number): number; cdf(x: number, dof: number): number };
    studentt: { inv(p: number, dof: number): number };
  };
  export default jStat;
}
