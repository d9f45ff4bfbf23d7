export { createMetalBackend, metalUnavailableReason } from './metal-backend.js';
