#!/usr/bin/env node
// The `baton` command. Runs the compiled CLI (built by `npm run build`, which
// `npm install` runs through the `prepare` script).
import { main } from '../dist/cli/main.js';

await main(process.argv);
