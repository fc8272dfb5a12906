/** What the code under test writes to stderr, kept instead of printed (restore with vi.restoreAllMocks). */
import { vi } from 'vitest';

export function captureStderr(): string[] {
  const lines: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return lines;
}
