/**
 * The byte ranges of a JSON array's elements, found without decoding the whole text: a file can
 * be larger than the longest string V8 can hold (~512 MiB; ShareGPT_V3 is over 600 MB), so each
 * element is decoded and parsed on its own. Only the array's structure is checked here (brackets,
 * strings, commas); an element's own syntax is JSON.parse's to judge. Pure.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_SQUARE = 0x5b;
const CLOSE_SQUARE = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;

const isSpace = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

export class JsonScanError extends Error {}

/** The text (past a BOM and whitespace) does not open a list: it may still be JSON, of another kind. */
export class NotAListError extends JsonScanError {}

/** Where `bytes` starts: past a UTF-8 BOM and whitespace. */
export function contentStart(bytes: Uint8Array): number {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (i < bytes.length && isSpace(bytes[i] as number)) i++;
  return i;
}


export function jsonArrayElements(bytes: Uint8Array): Array<[number, number]> {
  let i = contentStart(bytes);
  if (i >= bytes.length) throw new JsonScanError('the file is empty');
  if (bytes[i] !== OPEN_SQUARE) throw new NotAListError(`expected a JSON list at byte ${i}`);
  i++;
  const ranges: Array<[number, number]> = [];
  for (;;) {
    while (i < bytes.length && isSpace(bytes[i] as number)) i++;
    if (i >= bytes.length) throw new JsonScanError('the list is not closed');
    if (bytes[i] === CLOSE_SQUARE && ranges.length === 0) {
      i++;
      break;
    }
    const start = i;
    // The brackets open inside this element, innermost last: a close must match the last one.
    const open: number[] = [];
    for (; i < bytes.length; i++) {
      const b = bytes[i] as number;
      if (b === QUOTE) {
        // Past the string: an escaped character never ends it.
        for (i++; i < bytes.length && bytes[i] !== QUOTE; i++) if (bytes[i] === BACKSLASH) i++;
        if (i >= bytes.length) throw new JsonScanError(`a string starting in the element at byte ${start} is not closed`);
      } else if (b === OPEN_CURLY || b === OPEN_SQUARE) open.push(b);
      else if (b === CLOSE_CURLY || b === CLOSE_SQUARE) {
        const opener = open.pop();
        if (opener === undefined) break;
        if ((opener === OPEN_CURLY) !== (b === CLOSE_CURLY)) {
          throw new JsonScanError(`"${String.fromCharCode(b)}" at byte ${i} closes a "${String.fromCharCode(opener)}" (in the list element at byte ${start})`);
        }
      } else if (b === COMMA && open.length === 0) break;
    }
    let end = i;
    while (end > start && isSpace(bytes[end - 1] as number)) end--;
    if (end === start) throw new JsonScanError(`an empty element at byte ${start}`);
    ranges.push([start, end]);
    if (i >= bytes.length) throw new JsonScanError('the list is not closed');
    if (bytes[i] === COMMA) {
      i++;
      continue;
    }
    if (bytes[i] !== CLOSE_SQUARE) throw new JsonScanError(`unexpected "${String.fromCharCode(bytes[i] as number)}" at byte ${i}`);
    i++;
    break;
  }
  while (i < bytes.length && isSpace(bytes[i] as number)) i++;
  if (i < bytes.length) throw new JsonScanError(`unexpected text after the list at byte ${i}`);
  return ranges;
}

/** The byte ranges of `bytes`' lines (LF or CRLF), each without its line end. */
export function lineRanges(bytes: Uint8Array): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  while (start <= bytes.length) {
    let end = buffer.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    const next = end + 1;
    if (end > start && bytes[end - 1] === 0x0d) end--;
    ranges.push([start, end]);
    start = next;
  }
  return ranges;
}
