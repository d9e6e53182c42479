/** The LIMS connector: QC results arriving as files in a watched folder. */
export { type FolderLimsOptions, type LimsChange, type LimsProblem, type LimsSource, limsResultsDir, openFolderLims } from './folder.js';
