/**
 * A DecodeRequest's bytes read as JetStream reads them — Python protobuf (upb) — before
 * protobufjs sees them. The two disagree at the edges of the wire format: upb refuses field
 * number 0, invalid UTF-8 in a `string` field and groups nested past its depth limit, where
 * protobufjs reads on; and upb keeps a known field sent with the wrong wire type as an unknown
 * field, where protobufjs misreads it (losing the request's content) or fails. `int32` values
 * wider than 32 bits are truncated, as upb does. Pure.
 *
 * Bytes both read alike (every request a real client sends) pass through untouched after one
 * allocation-free scan. Others are re-encoded with only what upb would put in the known fields
 * (a message field sent twice merged, the last member of a oneof kept), so protobufjs's reading
 * of them is upb's reading of the original. A refusal throws, which grpc-js answers with
 * INTERNAL "Error deserializing request", as grpcio does.
 */
import { isUtf8 } from 'node:buffer';

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;

/** upb's default limit on nested messages and groups (`kUpb_WireFormat_DefaultDepthLimit`). */
const DEPTH_LIMIT = 100;

type FieldKind = 'int32' | 'bool' | 'string' | 'float' | 'repeated-int32' | MessageSchema;
interface MessageSchema {
  readonly [field: number]: FieldKind;
}

const TEXT_CONTENT: MessageSchema = { 1: 'string' };
const TOKEN_CONTENT: MessageSchema = { 1: 'repeated-int32' };
const METADATA: MessageSchema = { 1: 'float' };
/** jetstream.proto's DecodeRequest (field numbers of DESIGN §7). */
const DECODE_REQUEST: MessageSchema = { 4: 'int32', 5: TEXT_CONTENT, 6: TOKEN_CONTENT, 7: METADATA, 8: 'int32', 9: 'string', 10: 'bool' };

export class MalformedMessage extends Error {}

class Cursor {
  pos = 0;
  constructor(readonly bytes: Uint8Array, readonly end: number) {}

  /** Bytes the last `varint` read. */
  varintBytes = 0;
  /** The low 32 bits of the last `varint` (exact: they come from its first 5 bytes). */
  low32 = 0;

  /**
   * A varint as a Number: exact below 2^53, which covers every tag and length (larger ones
   * fail the bounds checks); `low32` is what an int32 field takes of it, as upb truncates.
   */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let n = 1; n <= 10; n++) {
      if (this.pos >= this.end) throw new MalformedMessage('truncated varint');
      const byte = this.bytes[this.pos++] as number;
      value += (byte & 0x7f) * scale;
      scale *= 128;
      if (n === 5) this.low32 = value % 0x1_0000_0000;
      if ((byte & 0x80) === 0) {
        this.varintBytes = n;
        if (n < 5) this.low32 = value;
        return value;
      }
    }
    throw new MalformedMessage('varint longer than 10 bytes');
  }

  skip(n: number): number {
    const start = this.pos;
    if (n < 0 || this.end - this.pos < n) throw new MalformedMessage('field runs past the end of the message');
    this.pos += n;
    return start;
  }
}

/** `value` (a whole number below 2^53) as a varint. */
function encodeVarint(value: number, out: number[]): void {
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

function pushBytes(out: number[], bytes: Uint8Array): void {
  for (let i = 0; i < bytes.length; i++) out.push(bytes[i] as number);
}

/**
 * An int32 field's value re-encoded: its low 32 bits as an unsigned varint (at most 5 bytes),
 * which protobufjs and upb both read back as the same signed int32.
 */
const int32Bits = (cursor: Cursor): number => {
  cursor.varint();
  return cursor.low32;
};

/** Skips one field's value of `wireType` (a group up to its end marker). */
function skipValue(cursor: Cursor, wireType: number, field: number, depth: number): void {
  switch (wireType) {
    case VARINT:
      cursor.varint();
      return;
    case FIXED64:
      cursor.skip(8);
      return;
    case LEN:
      cursor.skip(lengthOf(cursor));
      return;
    case FIXED32:
      cursor.skip(4);
      return;
    case START_GROUP: {
      if (depth + 1 > DEPTH_LIMIT) throw new MalformedMessage('groups nested too deep');
      for (;;) {
        const { field: inner, wireType: innerType } = readTag(cursor);
        if (innerType === END_GROUP) {
          if (inner !== field) throw new MalformedMessage('group ends with another field number');
          return;
        }
        skipValue(cursor, innerType, inner, depth + 1);
      }
    }
    default:
      throw new MalformedMessage(`invalid wire type ${wireType}`);
  }
}

function lengthOf(cursor: Cursor): number {
  const length = cursor.varint();
  if (length > cursor.end - cursor.pos) throw new MalformedMessage('length runs past the end of the message');
  return length;
}

function readTag(cursor: Cursor): { field: number; wireType: number } {
  const tag = cursor.varint();
  // upb reads a tag in at most 5 bytes (`_upb_Decoder_DecodeTag`).
  if (cursor.varintBytes > 5) throw new MalformedMessage('tag longer than 5 bytes');
  if (tag > 0xffffffff) throw new MalformedMessage('tag wider than 32 bits');
  const field = Math.floor(tag / 8);
  if (field === 0) throw new MalformedMessage('field number 0');
  return { field, wireType: tag % 8 };
}

/** The message between `cursor.pos` and `cursor.end`, re-encoded with its known fields only. */
function sanitize(cursor: Cursor, schema: MessageSchema, depth: number, out: number[]): void {
  while (cursor.pos < cursor.end) sanitizeOne(cursor, schema, depth, out);
}

/** One field at `cursor.pos`: re-encoded into `out` when upb would set it, else skipped. */
function sanitizeOne(cursor: Cursor, schema: MessageSchema, depth: number, out: number[]): void {
  const { field, wireType } = readTag(cursor);
  if (wireType === END_GROUP) throw new MalformedMessage('end of a group that never started');
  const kind = schema[field];
  const tag = (wire: number): void => encodeVarint(field * 8 + wire, out);
  if (kind === 'int32' && wireType === VARINT) {
    tag(VARINT);
    encodeVarint(int32Bits(cursor), out);
  } else if (kind === 'bool' && wireType === VARINT) {
    tag(VARINT);
    out.push(cursor.varint() === 0 ? 0 : 1);
  } else if (kind === 'float' && wireType === FIXED32) {
    tag(FIXED32);
    pushBytes(out, cursor.bytes.subarray(cursor.skip(4), cursor.pos));
  } else if (kind === 'string' && wireType === LEN) {
    const length = lengthOf(cursor);
    const text = cursor.bytes.subarray(cursor.skip(length), cursor.pos);
    if (!isUtf8(text)) throw new MalformedMessage(`field ${field} is not valid UTF-8`);
    tag(LEN);
    encodeVarint(length, out);
    pushBytes(out, text);
  } else if (kind === 'repeated-int32' && (wireType === VARINT || wireType === LEN)) {
    // Packed or not, as every proto3 reader accepts both; written back one by one.
    const values: number[] = [];
    if (wireType === VARINT) values.push(int32Bits(cursor));
    else {
      const length = lengthOf(cursor);
      const packed = new Cursor(cursor.bytes, cursor.pos + length);
      packed.pos = cursor.pos;
      while (packed.pos < packed.end) values.push(int32Bits(packed));
      cursor.pos = packed.end;
    }
    for (const value of values) {
      tag(VARINT);
      encodeVarint(value, out);
    }
  } else if (typeof kind === 'object' && wireType === LEN) {
    if (depth + 1 > DEPTH_LIMIT) throw new MalformedMessage('messages nested too deep');
    const length = lengthOf(cursor);
    const inner = new Cursor(cursor.bytes, cursor.pos + length);
    inner.pos = cursor.pos;
    const body: number[] = [];
    sanitize(inner, kind, depth + 1, body);
    cursor.pos = inner.end;
    tag(LEN);
    encodeVarint(body.length, out);
    for (const byte of body) out.push(byte);
  } else {
    // An unknown field, or a known one with another wire type: upb keeps it as unknown.
    skipValue(cursor, wireType, field, depth);
  }
}

/** The fields of DecodeRequest's `content` oneof: the last one on the wire is the one set. */
const CONTENT_ONEOF = new Set([5, 6]);

/**
 * protobufjs reads an int32 varint of up to 5 bytes, or of 10 (a negative one, sign-extended),
 * as its low 32 bits, as upb does; one of 6 to 9 bytes it misreads (it skips 5 bytes blindly).
 */
const int32ReadAlike = (varintBytes: number): boolean => varintBytes <= 5 || varintBytes === 10;

/**
 * Whether protobufjs reads the message as upb does, scanning it once without allocating: every
 * field known, of its wire type, canonical (int32 as int32ReadAlike says, bool 0 or 1), no message
 * field twice and one content member. Throws where upb refuses the bytes.
 */
function readsAlike(cursor: Cursor, schema: MessageSchema, depth: number): boolean {
  let seenMessages = 0;
  while (cursor.pos < cursor.end) {
    const tag = cursor.varint();
    // A tag or length padded past 5 bytes: protobufjs reads 5 and skips 5 blindly (upb reads a
    // padded length, refuses a padded tag): the rewrite decides.
    if (tag > 0xffffffff || cursor.varintBytes > 5) return false;
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0) throw new MalformedMessage('field number 0');
    const kind = schema[field];
    if (kind === 'int32' && wireType === VARINT) {
      cursor.varint();
      if (!int32ReadAlike(cursor.varintBytes)) return false;
    } else if (kind === 'bool' && wireType === VARINT) {
      if (cursor.varint() > 1 || cursor.varintBytes > 1) return false;
    } else if (kind === 'float' && wireType === FIXED32) {
      cursor.skip(4);
    } else if (kind === 'string' && wireType === LEN) {
      const length = cursor.varint();
      if (cursor.varintBytes > 5) return false;
      const start = cursor.skip(length);
      if (!isUtf8(cursor.bytes.subarray(start, cursor.pos))) throw new MalformedMessage(`field ${field} is not valid UTF-8`);
    } else if (kind === 'repeated-int32' && wireType === VARINT) {
      cursor.varint();
      if (!int32ReadAlike(cursor.varintBytes)) return false;
    } else if (kind === 'repeated-int32' && wireType === LEN) {
      const length = cursor.varint();
      if (cursor.varintBytes > 5) return false;
      const start = cursor.skip(length);
      const packed = new Cursor(cursor.bytes, start + length);
      packed.pos = start;
      while (packed.pos < packed.end) {
        packed.varint();
        if (!int32ReadAlike(packed.varintBytes)) return false;
      }
    } else if (typeof kind === 'object' && wireType === LEN && depth + 1 <= DEPTH_LIMIT) {
      // A message field twice is merged by upb, replaced by protobufjs; both content members: upb keeps the last.
      const bit = 1 << field;
      if ((seenMessages & bit) !== 0 || (CONTENT_ONEOF.has(field) && (seenMessages & ((1 << 5) | (1 << 6))) !== 0)) return false;
      seenMessages |= bit;
      const length = cursor.varint();
      if (cursor.varintBytes > 5) return false;
      const start = cursor.skip(length);
      const inner = new Cursor(cursor.bytes, start + length);
      inner.pos = start;
      if (!readsAlike(inner, kind, depth + 1)) return false;
    } else {
      return false;
    }
  }
  return true;
}

/** The DecodeRequest's bytes as upb would read them; throws MalformedMessage where upb refuses. */
export function sanitizeDecodeRequest(bytes: Buffer): Buffer {
  if (readsAlike(new Cursor(bytes, bytes.length), DECODE_REQUEST, 0)) return bytes;
  const scalars: number[] = [];
  /** Message fields by number, each body merged as upb merges a field sent twice. */
  const messages = new Map<number, number[]>();
  const cursor = new Cursor(bytes, bytes.length);
  while (cursor.pos < cursor.end) {
    const start = cursor.pos;
    const { field, wireType } = readTag(cursor);
    const kind = DECODE_REQUEST[field];
    if (typeof kind !== 'object' || wireType !== LEN) {
      cursor.pos = start;
      sanitizeOne(cursor, DECODE_REQUEST, 0, scalars);
      continue;
    }
    const length = lengthOf(cursor);
    const inner = new Cursor(bytes, cursor.pos + length);
    inner.pos = cursor.pos;
    const body: number[] = [];
    sanitize(inner, kind, 1, body);
    cursor.pos = inner.end;
    // Setting one member of the content oneof clears the other.
    if (CONTENT_ONEOF.has(field)) for (const other of CONTENT_ONEOF) if (other !== field) messages.delete(other);
    const merged = messages.get(field);
    if (merged === undefined) messages.set(field, body);
    else for (const byte of body) merged.push(byte);
  }
  for (const [field, body] of messages) {
    encodeVarint(field * 8 + LEN, scalars);
    encodeVarint(body.length, scalars);
    for (const byte of body) scalars.push(byte);
  }
  return Buffer.from(scalars);
}
