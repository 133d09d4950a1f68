/** Kept for importers of the old place: report files are written by src/files.ts. */
export { checkOutputPath, writeFileAtomic } from '../files.js';
