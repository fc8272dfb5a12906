#!/usr/bin/env node
// Entry point of `npx benchtruth`: loads the TypeScript sources through tsx, then runs the CLI.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
const code = await main(process.argv.slice(2));
if (code !== 0) process.exitCode = code;
