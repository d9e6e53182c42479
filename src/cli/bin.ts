// Run the CLI from source (tests and development: `tsx src/cli/bin.ts ...`).
import { main } from './main.js';

await main(process.argv);
