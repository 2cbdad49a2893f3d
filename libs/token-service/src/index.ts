export { tokenServiceRoutes, type TokenServiceScope } from './token-service.routes.js';
