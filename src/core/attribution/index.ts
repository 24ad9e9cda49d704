export { lineAttribution, changedFiles, type LineAttribution, type FileAttribution } from './lines';
export { snapshotChangedFiles, readSnapshotIndex, snapshotFilePath, originalFilePath, changedFileView, SNAPSHOT_DIR, ORIGINALS_DIR, SNAPSHOT_INDEX, SNAPSHOT_LIMITS, type SnapshotIndex, type SnapshotOptions, type OriginalRecord, type ChangedFileView } from './snapshot';
export { imageOriginals, workspaceOriginals, unknownOriginals, originalImageOf, type OriginalSource, type OriginalContent, type OriginalImage } from './originals';
export { decorationModel, type LineDecoration, type DecorationKind } from './decorations';
