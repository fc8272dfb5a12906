/**
 * YAML text from a file the command line names → a plain value, strictly: one document, and a
 * warning (an unknown `!tag`) is an error. The yaml package never prints here (its default
 * writes a multi-line Node warning to stderr, where a bad file must be one line).
 */
import { parseAllDocuments } from 'yaml';

export function parseYamlStrict(text: string, options: { intAsBigInt?: boolean } = {}): unknown {
  // Merge keys (`<<: *defaults`) as YAML 1.1 reads them: configs share stage or adapter settings so.
  const docs = parseAllDocuments(text, { logLevel: 'silent', merge: true, ...options });
  if (docs.length > 1) throw new Error('more than one YAML document (a `---` line starts another): give one');
  const doc = docs[0];
  if (doc === undefined) return null;
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem !== undefined) throw new Error((problem.message.split('\n')[0] ?? '').replace(/:\s*$/, ''));
  return doc.toJS({ maxAliasCount: 100 });
}
