/**
 * `rawko/trustWorkspace`: before rawko runs a workspace's hooks (commands from its
 * `.rawko/config.json`) or uses its settings that choose what runs and where keys go
 * (`providers`, `arbiter`, `apiKeys`), it asks whether the user trusts them. The answer is a
 * modal question listing every hook and setting; closing it without choosing means "not trusted".
 */
import type { TrustWorkspaceParams, TrustWorkspaceResult } from './protocol';
import type { Vs } from './vs';

export const TRUST = 'Trust and run hooks';
export const TRUST_SETTINGS = 'Trust the workspace';
export const DONT_TRUST = "Don't trust";

function lines(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((l): l is string => typeof l === 'string') : [];
}

export async function askTrust(vs: Vs, params: TrustWorkspaceParams): Promise<TrustWorkspaceResult> {
  const hooks = lines(params.hooks);
  const settings = lines(params.settings);
  const where = typeof params.workspace === 'string' && params.workspace !== '' ? params.workspace : 'this workspace';
  if (settings.length === 0) {
    const message = params.changed
      ? `rawko: the hooks of ${where} changed since you trusted it. Trust the workspace and run them?`
      : `rawko: ${where} has hooks that run commands on your machine. Trust the workspace and run them?`;
    const detail = hooks.length > 0 ? hooks.join('\n') : '(no hooks listed)';
    const choice = await vs.window.showWarningMessage(message, { modal: true, detail }, TRUST, DONT_TRUST);
    return { trusted: choice === TRUST };
  }
  const message = params.changed
    ? `rawko: what ${where} asks you to trust changed since you trusted it. Trust the workspace again?`
    : `rawko: ${where} has settings that choose what runs and where your keys go${hooks.length > 0 ? ', and hooks that run commands' : ''}. Trust the workspace?`;
  const detail = [...(hooks.length > 0 ? ['Hooks:', ...hooks, ''] : []), 'Settings:', ...settings].join('\n');
  const choice = await vs.window.showWarningMessage(message, { modal: true, detail }, TRUST_SETTINGS, DONT_TRUST);
  return { trusted: choice === TRUST_SETTINGS };
}
