// The type bytes of PostgreSQL's protocol 3.0 messages that the gateway reads or writes, in one
// place: the header walk, the query counters and the handshake must agree on every one, and some
// letters mean one thing from the client and another from the server ('E' is Execute one way and
// ErrorResponse the other), so each side has its own table.

const code = (letter: string): number => letter.charCodeAt(0);

/** Messages a client sends after its startup packet. */
export const FrontendType = {
  Query: code('Q'),
  Parse: code('P'),
  Bind: code('B'),
  Describe: code('D'),
  Execute: code('E'),
  Close: code('C'),
  Flush: code('H'),
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
  ParseComplete: code('1'),
  BindComplete: code('2'),
  CloseComplete: code('3'),
  CommandComplete: code('C'),
  CopyData: code('d'),
  DataRow: code('D'),
  EmptyQueryResponse: code('I'),
  ErrorResponse: code('E'),
  NegotiateProtocolVersion: code('v'),
  NoData: code('n'),
  NoticeResponse: code('N'),
  NotificationResponse: code('A'),
  ParameterDescription: code('t'),
  ParameterStatus: code('S'),
  PortalSuspended: code('s'),
  ReadyForQuery: code('Z'),
  RowDescription: code('T'),
} as const;

/** What a Describe or Close names: a prepared statement or a portal. */
export const DescribeTarget = {
  Statement: code('S'),
  Portal: code('P'),
} as const;

/** The transaction status ReadyForQuery carries when no transaction is open. */
export const TRANSACTION_IDLE = code('I');
