/** The messages between a server thread and its parent. */
export type ToServerThread = { type: 'close' };
export type FromServerThread = { type: 'listening'; port: number } | { type: 'failed'; message: string } | { type: 'closed' };
