/**
 * inference-perf's concise failure labels (reportgen/base.py make_concise_label), for
 * failures.by_label: each failure is labelled on its own, from its kind and its message.
 */
/** inference-perf's labels of HTTP statuses whose meaning the status alone gives (reportgen/base.py). */
const HTTP_CODE_LABELS: Readonly<Record<string, string>> = { 429: 'Rate Limit', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };
/** Its labels of other statuses, read from the message. */
const HTTP_MESSAGE_LABELS: ReadonlyArray<[RegExp, string]> = [
  [/context.window|context length|maximum context|max.?tokens|token.?limit/i, 'Context Window'],
  [/invalid.?json|json.?parse|malformed.?json|unexpected.?token|expecting value|unterminated string|expecting ',' delimiter/i, 'Invalid JSON'],
  [/timeout|timed.?out/i, 'Timeout'],
  [/model.?not.?found|no such model/i, 'Model Not Found'],
];

/**
 * inference-perf's concise label (make_concise_label) of one failure: `<code> - <label>` for an
 * HTTP status (from the status, else from its message, else "other"); "Timeout" and
 * "Connection Error" for ours of those kinds; any other kind is its own label, as inference-perf
 * falls back to the error's type.
 */
export function conciseLabel(kind: string, message: string): string {
  const http = /^http_(\d+)$/.exec(kind);
  if (http !== null) {
    const code = http[1] as string;
    const byCode = HTTP_CODE_LABELS[code];
    if (byCode !== undefined) return `${code} - ${byCode}`;
    const byMessage = HTTP_MESSAGE_LABELS.find(([pattern]) => pattern.test(message));
    return `${code} - ${byMessage?.[1] ?? 'other'}`;
  }
  if (kind === 'timeout') return 'Timeout';
  if (kind === 'connect_error') return 'Connection Error';
  return kind;
}
