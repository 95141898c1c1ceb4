/**
 * The smaller pieces: workspace trust, finding the binary and its arguments, the crash policy,
 * diff previews and workflow diagnostics.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupDiagnostics } from '../../src/diagnostics';
import { proposeChange } from '../../src/preview';
import { CrashPolicy, INSTALL_HINT, resolveServerCommand, serveArgs } from '../../src/server';
import { askTrust, DONT_TRUST, TRUST, TRUST_SETTINGS } from '../../src/trust';
import { FakeVs } from './fake-vscode';

describe('workspace trust', () => {
  const params = { workspace: '/home/ada/project', hooks: ['PreToolUse: ./check.sh', 'Stop: cargo test'], changed: false };

  it('asks modally, listing every hook, and trusts on "Trust and run hooks"', async () => {
    const vs = new FakeVs();
    vs.script.messages.push(TRUST);
    assert.deepEqual(await askTrust(vs, params), { trusted: true });
    const call = vs.messages[0];
    assert.equal(call?.severity, 'warning');
    assert.equal(call?.options?.modal, true);
    assert.equal(call?.options?.detail, 'PreToolUse: ./check.sh\nStop: cargo test');
    assert.deepEqual(call?.items, [TRUST, DONT_TRUST]);
    assert.match(call?.message ?? '', /\/home\/ada\/project has hooks/);
  });

  it('does not trust on "Don\'t trust" or when dismissed', async () => {
    const vs = new FakeVs();
    vs.script.messages.push(DONT_TRUST, undefined);
    assert.deepEqual(await askTrust(vs, params), { trusted: false });
    assert.deepEqual(await askTrust(vs, params), { trusted: false });
  });

  it('says when the hooks changed, and copes with odd params', async () => {
    const vs = new FakeVs();
    vs.script.messages.push(undefined);
    await askTrust(vs, { workspace: '', hooks: null as unknown as string[], changed: true });
    assert.match(vs.messages[0]?.message ?? '', /hooks of this workspace changed/);
    assert.equal(vs.messages[0]?.options?.detail, '(no hooks listed)');
  });

  it('lists the settings that choose what runs and where keys go, with the hooks', async () => {
    const vs = new FakeVs();
    vs.script.messages.push(TRUST_SETTINGS, DONT_TRUST);
    const withSettings = { ...params, settings: ['provider anthropic at http://127.0.0.1:9', 'apiKeys: a key for anthropic (values not shown)'] };
    assert.deepEqual(await askTrust(vs, withSettings), { trusted: true });
    const call = vs.messages[0];
    assert.deepEqual(call?.items, [TRUST_SETTINGS, DONT_TRUST]);
    assert.match(call?.message ?? '', /settings that choose what runs and where your keys go, and hooks/);
    assert.equal(
      call?.options?.detail,
      'Hooks:\nPreToolUse: ./check.sh\nStop: cargo test\n\nSettings:\nprovider anthropic at http://127.0.0.1:9\napiKeys: a key for anthropic (values not shown)',
    );
    assert.deepEqual(await askTrust(vs, { ...withSettings, hooks: [], changed: true }), { trusted: false });
    assert.match(vs.messages[1]?.message ?? '', /changed since you trusted it/);
  });
});

describe('finding rawko', () => {
  const files = new Set(['/usr/local/bin/rawko', '/home/ada/.cargo/bin/rawko', '/work/bin/rawko']);
  const exists = (f: string): boolean => files.has(f);

  it('takes rawko from PATH when no path is set', () => {
    assert.deepEqual(resolveServerCommand('', '/work', { PATH: '/usr/bin:/usr/local/bin', HOME: '/home/ada' }, exists), {
      command: '/usr/local/bin/rawko',
    });
  });

  it('falls back to ~/.cargo/bin, where cargo install puts it', () => {
    assert.deepEqual(resolveServerCommand('', '/work', { PATH: '/usr/bin', HOME: '/home/ada' }, exists), {
      command: '/home/ada/.cargo/bin/rawko',
    });
  });

  it('takes the setting: absolute, relative to the workspace, or with ~', () => {
    const env = { PATH: '', HOME: '/home/ada' };
    assert.deepEqual(resolveServerCommand('/usr/local/bin/rawko', '/x', env, exists), { command: '/usr/local/bin/rawko' });
    assert.deepEqual(resolveServerCommand('bin/rawko', '/work', env, exists), { command: '/work/bin/rawko' });
    assert.deepEqual(resolveServerCommand('~/.cargo/bin/rawko', '/x', env, exists), { command: '/home/ada/.cargo/bin/rawko' });
  });

  it('says how to install it when it is missing', () => {
    const none = resolveServerCommand('', '/work', { PATH: '/usr/bin', HOME: '/nobody' }, exists);
    assert.ok('missing' in none);
    assert.ok(none.missing.includes(INSTALL_HINT));
    assert.match(none.missing, /cargo install --locked --path server/);
    const wrong = resolveServerCommand('/opt/rawko', '/work', { PATH: '' }, exists);
    assert.ok('missing' in wrong && wrong.missing.includes('/opt/rawko'));
  });

  it('restarts a crashed server once, then leaves it until the user restarts it', () => {
    const policy = new CrashPolicy();
    assert.equal(policy.onCrash(), 'restart');
    assert.equal(policy.onCrash(), 'stop');
    assert.equal(policy.onCrash(), 'stop');
    policy.reset();
    assert.equal(policy.onCrash(), 'restart');
  });
});

describe('the arguments of rawko serve', () => {
  it('is plain serve without rawko.web.listen nor rawko.team.nats, so no page is served', () => {
    assert.deepEqual(serveArgs(''), ['serve']);
    assert.deepEqual(serveArgs('   '), ['serve']);
  });

  it('adds --web with the address of rawko.web.listen, trimmed', () => {
    assert.deepEqual(serveArgs('127.0.0.1:0'), ['serve', '--web', '127.0.0.1:0']);
    assert.deepEqual(serveArgs(' [::1]:8080 '), ['serve', '--web', '[::1]:8080']);
  });

  it('adds --nats with the URLs of rawko.team.nats, trimmed, after --web; empty: no flag', () => {
    assert.deepEqual(serveArgs('', 'nats://nats1:4222'), ['serve', '--nats', 'nats://nats1:4222']);
    assert.deepEqual(serveArgs('', ' nats://a:4222,nats://b:4222 '), ['serve', '--nats', 'nats://a:4222,nats://b:4222']);
    assert.deepEqual(serveArgs('127.0.0.1:0', 'nats://a:4222'), ['serve', '--web', '127.0.0.1:0', '--nats', 'nats://a:4222']);
    assert.deepEqual(serveArgs('127.0.0.1:0', '  '), ['serve', '--web', '127.0.0.1:0']);
    assert.deepEqual(serveArgs('', ''), ['serve']);
  });
});

describe('diff preview', () => {
  it('a Write to a new file is a diff from nothing', () => {
    assert.deepEqual(proposeChange('Write', { path: 'PLAN.md', content: 'plan' }, undefined), {
      path: 'PLAN.md',
      before: '',
      after: 'plan',
      note: 'new file',
    });
  });

  it('a Write over a file replaces all of it', () => {
    assert.deepEqual(proposeChange('Write', { file_path: 'a', content: 'new' }, 'old'), { path: 'a', before: 'old', after: 'new', note: undefined });
  });

  it('an Edit replaces the old text in the file, literally', () => {
    const p = proposeChange('Edit', { path: 'g.sh', old_text: 'name=1', new_text: 'name=$1 $&' }, 'a\nname=1\nb\n');
    assert.equal(p?.after, 'a\nname=$1 $&\nb\n');
  });

  it('an Edit whose text is not in the file shows the two texts', () => {
    const p = proposeChange('Edit', { path: 'g.sh', old_string: 'x', new_string: 'y' }, 'abc');
    assert.deepEqual(p, { path: 'g.sh', before: 'x', after: 'y', note: 'the replaced text only' });
  });

  it('other tools and inputs without a path have no preview', () => {
    assert.equal(proposeChange('Bash', { command: 'ls' }, undefined), undefined);
    assert.equal(proposeChange('Write', { content: 'x' }, undefined), undefined);
  });
});

describe('workflow diagnostics', () => {
  it('groups problems by file with 0-based positions', () => {
    const grouped = groupDiagnostics([
      { path: '/p/.rawko/workflows/feature/workflow.yaml', line: 3, column: 14, severity: 'error', workflow: 'feature', message: 'commandName must match' },
      { path: '/p/.rawko/workflows/docs/workflow.yaml', severity: 'warning', message: 'shadowed' },
      { path: '/p/.rawko/workflows/feature/workflow.yaml', line: 1, severity: 'strange', message: 'x' },
    ]);
    assert.deepEqual(grouped.get('/p/.rawko/workflows/feature/workflow.yaml'), [
      { line: 2, column: 13, severity: 'error', message: 'commandName must match (workflow feature)' },
      { line: 0, column: 0, severity: 'error', message: 'x' },
    ]);
    assert.deepEqual(grouped.get('/p/.rawko/workflows/docs/workflow.yaml'), [{ line: 0, column: 0, severity: 'warning', message: 'shadowed' }]);
  });
});
