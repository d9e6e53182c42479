// Moved to src/store/arbitration-store.ts (SQL belongs to the store layer). This re-export stays only until
// src/engine/guarded-writer.ts, split on a parallel branch, imports the new place; then delete this file.
export { ArbitrationStore } from '../store/arbitration-store.js';
