export { runService, type RunServiceOptions } from './run-service.js';
