/**
 * The typed mirror (`src/protocol.ts`) says what rawko's JSON Schemas (`protocol/schema/`,
 * generated from the Rust types) say: every method of the schemas is in the mirror and no other,
 * requests have a result and notifications none, and each params and result type has the same
 * fields, equally optional, of the same kind (string, number, boolean, array, object, enum
 * values), nested types included. The mirror's types are read with the TypeScript compiler.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as ts from 'typescript';

// out/unit/ → editors/vscode/
const EXTENSION = path.resolve(__dirname, '..', '..');
const SCHEMA_DIR = path.resolve(EXTENSION, '..', '..', 'protocol', 'schema');
const MIRROR = path.join(EXTENSION, 'src', 'protocol.ts');

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  const?: unknown;
  $ref?: string;
  $defs?: Record<string, Schema>;
}

interface MirrorMethod {
  method: string;
  kind: 'request' | 'notification';
  params: ts.Type;
  result?: ts.Type;
}

let mirror: { checker: ts.TypeChecker; methods: MirrorMethod[] } | undefined;

/** The methods of the mirror: each `new RequestType<P, R, void>(…)` / `new NotificationType<P>(…)`. */
function mirrorMethods(): { checker: ts.TypeChecker; methods: MirrorMethod[] } {
  if (mirror) {
    return mirror;
  }
  const config = ts.getParsedCommandLineOfConfigFile(path.join(EXTENSION, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  });
  assert.ok(config, 'tsconfig.json is readable');
  const program = ts.createProgram([MIRROR], config.options);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(MIRROR);
  assert.ok(source, `${MIRROR} is in the program`);
  const methods: MirrorMethod[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression)) {
      const kind = node.expression.text === 'RequestType' ? 'request' : node.expression.text === 'NotificationType' ? 'notification' : undefined;
      const [method] = node.arguments ?? [];
      const [params, result] = node.typeArguments ?? [];
      if (kind && method && ts.isStringLiteral(method) && params) {
        methods.push({
          method: method.text,
          kind,
          params: checker.getTypeFromTypeNode(params),
          result: kind === 'request' && result ? checker.getTypeFromTypeNode(result) : undefined,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  mirror = { checker, methods };
  return mirror;
}

/** The schemas by method: `rawko.startTask.params.json` → `rawko/startTask`. */
function schemaMethods(): Map<string, { params: Schema; result?: Schema }> {
  const byMethod = new Map<string, { params: Schema; result?: Schema }>();
  for (const file of fs.readdirSync(SCHEMA_DIR)) {
    const match = /^rawko\.(\w+)\.(params|result)\.json$/.exec(file);
    if (!match?.[1] || !match[2]) {
      continue;
    }
    const method = `rawko/${match[1]}`;
    const entry = byMethod.get(method) ?? { params: {} };
    const schema = JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, file), 'utf8')) as Schema;
    if (match[2] === 'params') {
      entry.params = schema;
    } else {
      entry.result = schema;
    }
    byMethod.set(method, entry);
  }
  return byMethod;
}

/** Compares a mirror type with a schema; returns what differs, one line each. */
function compare(checker: ts.TypeChecker, type: ts.Type, schema: Schema, root: Schema, where: string): string[] {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/$defs/', '');
    const target = root.$defs?.[name];
    return target ? compare(checker, type, target, root, where) : [`${where}: the schema refers to a missing ${name}`];
  }
  // An optional field of a named type: `anyOf` the type and null (serde's Option of an enum).
  const alternatives = (schema.anyOf ?? []).filter((s) => s.type !== 'null');
  const [only] = alternatives;
  if (schema.anyOf && alternatives.length === 1 && only && only.const === undefined) {
    return compare(checker, type, only, root, where);
  }
  const shown = checker.typeToString(type);
  const types = new Set([schema.type ?? []].flat().filter((t) => t !== 'null'));
  const values = schema.enum ?? (schema.oneOf ?? schema.anyOf)?.map((v) => v.const);
  if (values && values.every((v) => typeof v === 'string')) {
    const members = type.isUnion() ? type.types : [type];
    const known = new Set(members.filter((m) => m.isStringLiteral()).map((m) => m.value));
    const problems = values.filter((v) => !known.has(v)).map((v) => `${where}: the mirror lacks the value "${v}" (${shown})`);
    for (const value of known) {
      if (!values.includes(value)) {
        problems.push(`${where}: the mirror has the value "${value}", which rawko does not send`);
      }
    }
    return problems;
  }
  if (schema.properties || types.has('object')) {
    const problems: string[] = [];
    const props = new Map(checker.getPropertiesOfType(type).map((p) => [p.name, p]));
    const fields = schema.properties ?? {};
    for (const [name, field] of Object.entries(fields)) {
      const prop = props.get(name);
      if (!prop) {
        problems.push(`${where}: the mirror lacks the field ${name}`);
        continue;
      }
      const optional = (prop.flags & ts.SymbolFlags.Optional) !== 0;
      const required = schema.required?.includes(name) ?? false;
      if (optional === required) {
        problems.push(`${where}.${name}: ${required ? 'required' : 'optional'} in the schema, ${optional ? 'optional' : 'required'} in the mirror`);
      }
      const declared = checker.getTypeOfSymbol(prop);
      const unknown = (declared.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) !== 0;
      const propType = unknown ? declared : checker.getNonNullableType(declared);
      problems.push(...compare(checker, propType, field, root, `${where}.${name}`));
    }
    for (const name of props.keys()) {
      if (!(name in fields)) {
        problems.push(`${where}: the mirror has the field ${name}, which the schema does not`);
      }
    }
    return problems;
  }
  if (types.has('array')) {
    const element = checker.isArrayType(type) ? checker.getTypeArguments(type as ts.TypeReference)[0] : undefined;
    if (!element) {
      return [`${where}: an array in the schema, ${shown} in the mirror`];
    }
    return schema.items ? compare(checker, element, schema.items, root, `${where}[]`) : [];
  }
  const flags = type.flags;
  const fits = (wanted: ts.TypeFlags): boolean => (flags & wanted) !== 0;
  if (types.has('string') && !fits(ts.TypeFlags.StringLike)) {
    return [`${where}: a string in the schema, ${shown} in the mirror`];
  }
  if ((types.has('integer') || types.has('number')) && !fits(ts.TypeFlags.NumberLike)) {
    return [`${where}: a number in the schema, ${shown} in the mirror`];
  }
  if (types.has('boolean') && !fits(ts.TypeFlags.BooleanLike)) {
    return [`${where}: a boolean in the schema, ${shown} in the mirror`];
  }
  if (types.size === 0 && !fits(ts.TypeFlags.Unknown | ts.TypeFlags.Any)) {
    return [`${where}: any JSON in the schema, ${shown} in the mirror (use unknown)`];
  }
  return [];
}

/** Everything in which the mirror and the schemas differ. */
function differences(schemas: Map<string, { params: Schema; result?: Schema }>): string[] {
  const { checker, methods } = mirrorMethods();
  const problems: string[] = [];
  for (const m of methods) {
    const schema = schemas.get(m.method);
    if (!schema) {
      problems.push(`${m.method}: in the mirror, not in protocol/schema/`);
      continue;
    }
    problems.push(...compare(checker, m.params, schema.params, schema.params, `${m.method} params`));
    if (m.kind === 'request') {
      if (!schema.result || !m.result) {
        problems.push(`${m.method}: a request in the mirror, a notification in the schema`);
      } else {
        problems.push(...compare(checker, m.result, schema.result, schema.result, `${m.method} result`));
      }
    } else if (schema.result) {
      problems.push(`${m.method}: a notification in the mirror, a request in the schema`);
    }
  }
  for (const method of schemas.keys()) {
    if (!methods.some((m) => m.method === method)) {
      problems.push(`${method}: in protocol/schema/, not in the mirror`);
    }
  }
  return problems;
}

describe('the protocol mirror', () => {
  it('has every method of protocol/schema/ with the same fields', () => {
    const schemas = schemaMethods();
    assert.ok(schemas.size >= 20, `found the schemas in ${SCHEMA_DIR}`);
    assert.deepEqual(differences(schemas), []);
  });

  it('notices a field, a method or an enum value it lacks, and a field that differs', () => {
    const schemas = schemaMethods();
    const status = schemas.get('rawko/status');
    const countdown = schemas.get('rawko/countdown');
    assert.ok(status?.params.properties && countdown?.params.required && status.params.$defs?.TaskState?.oneOf);
    status.params.properties.phase = { type: 'string' };
    status.params.properties.seq = { type: 'string' };
    status.params.$defs.TaskState.oneOf.push({ type: 'string', const: 'paused' });
    countdown.params.required = countdown.params.required.filter((f) => f !== 'label');
    schemas.set('rawko/newMethod', { params: {} });
    schemas.delete('rawko/output');
    assert.deepEqual(differences(schemas).sort(), [
      'rawko/countdown params.label: optional in the schema, required in the mirror',
      'rawko/newMethod: in protocol/schema/, not in the mirror',
      'rawko/output: in the mirror, not in protocol/schema/',
      'rawko/status params.seq: a string in the schema, number in the mirror',
      'rawko/status params.state: the mirror lacks the value "paused" (TaskState)',
      'rawko/status params: the mirror lacks the field phase',
    ]);
  });
});
