/**
 * `/metrics`: the Prometheus text of every registered metric set. vLLM mounts its Prometheus app
 * on `^/metrics(?P<path>.*)$`, and a mount checks no method: any method on any path that
 * starts with `/metrics` (`/metrics/`, `/metrics/foo`) answers the exposition. prometheus_client
 * honours `?name[]=SAMPLE` (repeatable): only samples of those names, each with its family's
 * HELP and TYPE, and nothing for a name no sample has.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { MetricsHub } from './metrics-hub.ts';

export function metricsRoutes(app: FastifyInstance, hub: MetricsHub): void {
  const expose = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const text = restrictToQuery(await hub.text(), request.url);
    return reply.code(200).header('content-type', hub.registry.contentType).send(text);
  };
  app.all('/metrics', expose);
  app.all('/metrics*', expose);
}

/**
 * The exposition as `?name[]=…` asks for it (parse_qs: blank values dropped, so `name[]=` alone
 * restricts nothing); the whole text without the parameter.
 */
export function restrictToQuery(text: string, url: string): string {
  const query = url.indexOf('?');
  if (query === -1) return text;
  const names = new URLSearchParams(url.slice(query + 1)).getAll('name[]').filter((name) => name !== '');
  return names.length === 0 ? text : restrictExposition(text, new Set(names));
}

/** The exposition cut to the samples named, as prometheus_client's restricted registry cuts it. */
function restrictExposition(text: string, names: ReadonlySet<string>): string {
  let out = '';
  let header = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      // A HELP line opens a family; its TYPE line follows it.
      header = line.startsWith('# HELP ') ? `${line}\n` : `${header}${line}\n`;
      continue;
    }
    const end = line.search(/[{ ]/);
    if (!names.has(end === -1 ? line : line.slice(0, end))) continue;
    out += header + line + '\n';
    header = '';
  }
  return out;
}
