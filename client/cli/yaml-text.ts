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
  const value: unknown = doc.toJS({ maxAliasCount: 100 });
  if (containsItself(value)) throw new Error('an alias inside the node it names (`a: &x {b: *x}`) makes an endless value: give the value itself');
  return value;
}

/**
 * Whether a mapping or list holds itself (a YAML alias inside its own anchor, which toJS builds
 * as a cycle): every reader after this one would walk it forever. Iterative, so a deeply nested
 * file cannot overflow the stack here.
 */
function containsItself(root: unknown): boolean {
  const open = new Set<object>();
  const stack: Array<{ node: object; leaving: boolean }> = [];
  if (typeof root === 'object' && root !== null) stack.push({ node: root, leaving: false });
  while (stack.length > 0) {
    const { node, leaving } = stack.pop() as { node: object; leaving: boolean };
    if (leaving) {
      open.delete(node);
      continue;
    }
    if (open.has(node)) return true;
    open.add(node);
    stack.push({ node, leaving: true });
    for (const child of Object.values(node)) if (typeof child === 'object' && child !== null) stack.push({ node: child, leaving: false });
  }
  return false;
}
