export { runService } from './run-service.js';
