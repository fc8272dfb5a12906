/**
 * `GET /_truth/stream`: a live server-sent-events feed of truth records as requests finish
 * (event `truth`, id = the request id as the response's x-request-id carried it — never a CR or
 * LF, which would end the `id:` line and let an id write lines of its own — data = the record's
 * JSON as /_truth/requests/:id serves it, the id in full). `HEAD` answers the headers and ends:
 * a feed nobody can read must not hold the connection.
 * Filters: `?model=NAME`, `?faults=only`. Feeds end when the server closes, so a watching
 * dashboard never holds a shutdown open, and a feed whose reader falls far behind is closed.
 * A record's JSON is made a slice at a time in the emission scheduler's gaps, once for every
 * feed that wants it (sliced-truth-json.ts): made whole as the request ended, a record of
 * thousands of writes held the thread for 10–20 ms while other streams' writes fell due.
 */
import type { FastifyInstance } from 'fastify';
import { FastifySSEPlugin } from 'fastify-sse-v2';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ServerContext } from '../server-context.ts';
import { idHeaderValue, utf8OfLatin1 } from '../transport/id-header.ts';
import { SlicedTruthJson } from '../truth/sliced-truth-json.ts';

/**
 * How far a feed may fall behind (while its socket is backed up) before it is closed: in bytes,
 * since one record's JSON is 15–110 KB (a record count let one stalled reader hold gigabytes).
 */
const MAX_BACKLOG_BYTES = 32 * 1024 * 1024;

/**
 * How long a closing server lets a feed's reader take what is still queued for it (the records
 * that ended before the close, made at once: megabytes when their writes were one byte each)
 * before its connection is dropped; a reader that keeps up is done far sooner ('finish').
 */
const SHUTDOWN_DRAIN_MS = 2_000;
/** A reader that fell MAX_BACKLOG_BYTES behind is not reading: its connection goes almost at once. */
const BEHIND_DRAIN_MS = 100;

/** Why a feed ends: its reader left, fell too far behind, or the server is closing. */
type FeedEnd = 'gone' | 'behind' | 'shutdown';

interface FeedQuery {
  model?: string;
  faults?: string;
}

/** One open feed: hands it a record's JSON once it is made. */
type FeedSend = (record: TruthRecord, json: string) => void;

export function truthFeedRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const open = new Set<(why: FeedEnd) => void>();
  /** Ended records whose JSON is being made, and the feeds that wanted each. */
  const readers = new Map<TruthRecord, FeedSend[]>();
  const json = new SlicedTruthJson({
    defer: (job) => ctx.scheduler.defer(job),
    done: (record, text) => {
      const sends = readers.get(record) ?? [];
      readers.delete(record);
      for (const send of sends) {
        // One feed's failure is its own: the others still get the record.
        try {
          send(record, text);
        } catch (error) {
          process.emitWarning(`benchtruth: /_truth/stream: a feed could not be sent truth record ${JSON.stringify(record.id)} (${error instanceof Error ? error.message : String(error)})`);
        }
      }
    },
    failed: (record, error) => {
      readers.delete(record);
      process.emitWarning(`benchtruth: /_truth/stream: truth record ${JSON.stringify(record.id)} could not be serialized (${error instanceof Error ? error.message : String(error)}); it is left out`);
    },
  });
  /** A feed wants `record`: made once for all of them, in the gaps. */
  const want = (record: TruthRecord, send: FeedSend): void => {
    const sends = readers.get(record);
    if (sends !== undefined) {
      sends.push(send);
      return;
    }
    readers.set(record, [send]);
    json.push(record);
  };
  app.addHook('preClose', async () => {
    // What ended before the server began to close reaches the feeds still: made now, whole.
    json.flush();
    for (const close of [...open]) close('shutdown');
  });
  void app.register(async (scope) => {
    await scope.register(FastifySSEPlugin, { retryDelay: false });
    scope.get<{ Querystring: FeedQuery }>('/_truth/stream', (request, reply) => {
      if (request.method === 'HEAD') {
        void reply.code(200).headers({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }).send();
        return;
      }
      const { model, faults } = request.query;
      const onlyFaults = faults === 'only' || faults === '1' || faults === 'true';
      // A filter the feed does not know would otherwise stream everything as if none were asked for.
      if (faults !== undefined && !onlyFaults && faults !== 'all' && faults !== '0' && faults !== 'false') {
        void reply
          .code(400)
          .header('content-type', 'application/json')
          .send(JSON.stringify({ error: { message: `faults: expected only (records with a fault) or all, got ${JSON.stringify(faults)}.`, type: 'BadRequestError', param: 'faults', code: 400 } }));
        return;
      }
      const wanted = (record: TruthRecord): boolean => (model === undefined || record.model === model) && (!onlyFaults || record.fault !== null);
      // Held now: the response lets go of its socket once it finishes.
      const socket = request.raw.socket;
      reply.sse({ comment: ' benchtruth truth feed' });
      // A reader that stops reading must not make the server hold every record for it.
      let backlogBytes = 0;
      reply.raw.on('drain', () => {
        backlogBytes = 0;
      });
      const send: FeedSend = (record, data) => {
        if (!open.has(close)) return;
        if (reply.raw.writableNeedDrain && (backlogBytes += data.length) > MAX_BACKLOG_BYTES) {
          reply.sse({ comment: ` feed closed: the reader fell ${MAX_BACKLOG_BYTES / 1024 / 1024} MiB behind` });
          close('behind');
          return;
        }
        // The bytes x-request-id carried, in this UTF-8 stream: a UTF-8 id sent as a header is
        // held as its Latin-1 reading (café as cafÃ©), which written as is would be other bytes.
        reply.sse({ id: utf8OfLatin1(idHeaderValue(record.id)), event: 'truth', data });
      };
      const unsubscribe = ctx.truth.subscribe((record) => {
        if (wanted(record)) want(record, send);
      });
      const close = (why: FeedEnd): void => {
        if (!open.delete(close)) return;
        unsubscribe();
        reply.sseContext.source.end();
        // The connection must go too, once what is queued has left: a feed client's keep-alive
        // would hold a shutdown open.
        if (why !== 'gone') {
          const drop = (): void => {
            socket.destroy();
          };
          reply.raw.once('finish', drop);
          setTimeout(drop, why === 'shutdown' ? SHUTDOWN_DRAIN_MS : BEHIND_DRAIN_MS).unref();
        }
      };
      open.add(close);
      request.raw.once('close', () => close('gone'));
    });
  });
}
