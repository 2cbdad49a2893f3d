// The type bytes of PostgreSQL's protocol 3.0 messages that the gateway reads or writes, in one
// place: the header walk, the query counters and the handshake must agree on every one, and some
// letters mean one thing from the client and another from the server ('E' is Execute one way and
// ErrorResponse the other), so each side has its own table.

const code = (letter: string): number => letter.charCodeAt(0);

/** Messages a client sends after its startup packet. */
export const FrontendType = {
  Query: code('Q'),
  Execute: code('E'),
  FunctionCall: code('F'),
  Sync: code('S'),
  /** SASLInitialResponse and SASLResponse share their letter. */
  SaslResponse: code('p'),
  Terminate: code('X'),
} as const;

/** Messages a server sends. */
export const BackendType = {
  Authentication: code('R'),
  BackendKeyData: code('K'),
  CommandComplete: code('C'),
  EmptyQueryResponse: code('I'),
  ErrorResponse: code('E'),
  NegotiateProtocolVersion: code('v'),
  PortalSuspended: code('s'),
  ReadyForQuery: code('Z'),
} as const;

/** The transaction status ReadyForQuery carries when no transaction is open. */
export const TRANSACTION_IDLE = code('I');
