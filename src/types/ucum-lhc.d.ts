// @lhncbc/ucum-lhc ships no type declarations; src/domain/units.ts types the part it uses.
declare module '@lhncbc/ucum-lhc' {
  const ucum: unknown;
  export default ucum;
}
