export * from './schema';
export { TrajectoryWriter } from './writer';
export { readTrajectory, parseTrajectory, type Trajectory } from './reader';
export { toEpisode, toAtif, type Episode, type EpisodeStep, type AtifTrajectory, type AtifStep } from './export';
export { formatTrajectory, formatStep, actionSummary, PARSE_ERROR } from './replay';
export { stepObservation } from './observation';
