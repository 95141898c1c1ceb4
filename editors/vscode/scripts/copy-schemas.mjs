// Copies the JSON Schemas of the files users write from protocol/schema/ (generated from the Rust
// types) into schemas/, where package.json's yamlValidation and jsonValidation point. A schema the
// server does not generate yet is replaced by an empty one that accepts everything, so the
// editor's validation never points at a missing file; the build says which ones.
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const extension = join(here, '..');
const source = join(extension, '..', '..', 'protocol', 'schema');
const target = join(extension, 'schemas');

// Every schema package.json refers to: [file, what it describes].
export const SCHEMAS = [
  ['workflow.schema.json', 'workflow.yaml'],
  ['phase.schema.json', 'the frontmatter of a phase file'],
  ['agent.schema.json', 'an agent file (.rawko/agents/*.yaml)'],
  ['config.schema.json', 'config.json'],
];

mkdirSync(target, { recursive: true });
const missing = [];
for (const [file, what] of SCHEMAS) {
  const from = join(source, file);
  const to = join(target, file);
  if (existsSync(from)) {
    copyFileSync(from, to);
  } else {
    missing.push(file);
    writeFileSync(
      to,
      JSON.stringify(
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          description: `protocol/schema/ has no schema for ${what} yet; everything is accepted`,
        },
        null,
        2,
      ) + '\n',
    );
  }
}
if (missing.length > 0) {
  console.warn(`copy-schemas: not in protocol/schema yet, validation off for: ${missing.join(', ')}`);
}
