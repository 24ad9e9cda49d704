export { lineAttribution, changedFiles, type LineAttribution, type FileAttribution } from './lines';
export { snapshotChangedFiles, readSnapshotIndex, snapshotFilePath, SNAPSHOT_DIR, SNAPSHOT_INDEX, SNAPSHOT_LIMITS, type SnapshotIndex } from './snapshot';
export { decorationModel, type LineDecoration, type DecorationKind } from './decorations';
