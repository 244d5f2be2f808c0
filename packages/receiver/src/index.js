// The herald receiver kit (packages/receiver/README.md): verify callbacks, apply each event once, catch up
// from the event stream. No dependency on herald or on a database driver.
export { CursorExpiredError, catchUp, pgCursorStore, StreamError } from './catch-up.js';
export { createInbox, handleOnce, inboxSchema } from './inbox.js';
export { DEFAULT_TOLERANCE_SECONDS, refusal, VerificationError, verifyCallback } from './verify.js';
