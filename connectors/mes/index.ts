/** The MES connector: the interface the run engine uses and its embedded default, a watched inbox folder. */
export type { MesChange, MesListing, MesSource } from './source.js';
export { type FolderMes, type FolderMesOptions, type MesEntry, mesInboxDir, openFolderMes } from './folder.js';
export { folderIntake, type KeptRecord, type MesIntake } from './archive.js';
export { type SeededRecord, seedInbox } from './seed.js';
