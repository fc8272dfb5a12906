/** One raw HTTP/1.1 exchange over a fresh 127.0.0.1 socket: the bytes as sent, the bytes as received. */
import { connect } from 'node:net';

export interface RawResponse {
  /** Everything the server sent before closing (Connection: close is added to the request). */
  bytes: Buffer;
  status: number;
  /** A header's raw value bytes (the first one of that name), or undefined. */
  header(name: string): Buffer | undefined;
  body: string;
}

/** `head` is the request line and headers without the final blank line; `Connection: close` is appended. */
export function rawRequest(port: number, head: Buffer | string, body = ''): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const split = bytes.indexOf('\r\n\r\n');
      const headBytes = bytes.subarray(0, split);
      const lines: Buffer[] = [];
      for (let at = 0; at < headBytes.length; ) {
        const end = headBytes.indexOf('\r\n', at);
        lines.push(headBytes.subarray(at, end < 0 ? headBytes.length : end));
        at = end < 0 ? headBytes.length : end + 2;
      }
      resolve({
        bytes,
        status: Number(lines[0]?.toString('latin1').split(' ')[1]),
        header(name) {
          const prefix = `${name.toLowerCase()}: `;
          const line = lines.slice(1).find((l) => l.toString('latin1').toLowerCase().startsWith(prefix));
          return line?.subarray(prefix.length);
        },
        body: bytes.subarray(split + 4).toString('utf8'),
      });
    });
    const headBuffer = typeof head === 'string' ? Buffer.from(head, 'latin1') : head;
    const bodyBuffer = Buffer.from(body, 'utf8');
    socket.write(Buffer.concat([headBuffer, Buffer.from(`\r\nContent-Length: ${bodyBuffer.length}\r\nConnection: close\r\n\r\n`, 'latin1'), bodyBuffer]));
  });
}
