/**
 * `rawko/trustWorkspace`: before rawko runs a workspace's hooks (commands from its
 * `.rawko/config.json`) it asks whether the user trusts them. The answer is a modal question
 * listing every hook; closing it without choosing means "not trusted".
 */
import type { TrustWorkspaceParams, TrustWorkspaceResult } from './protocol';
import type { Vs } from './vs';

export const TRUST = 'Trust and run hooks';
export const DONT_TRUST = "Don't trust";

export async function askTrust(vs: Vs, params: TrustWorkspaceParams): Promise<TrustWorkspaceResult> {
  const hooks = Array.isArray(params.hooks) ? params.hooks.filter((h) => typeof h === 'string') : [];
  const where = typeof params.workspace === 'string' && params.workspace !== '' ? params.workspace : 'this workspace';
  const message = params.changed
    ? `rawko: the hooks of ${where} changed since you trusted it. Trust the workspace and run them?`
    : `rawko: ${where} has hooks that run commands on your machine. Trust the workspace and run them?`;
  const detail = hooks.length > 0 ? hooks.join('\n') : '(no hooks listed)';
  const choice = await vs.window.showWarningMessage(message, { modal: true, detail }, TRUST, DONT_TRUST);
  return { trusted: choice === TRUST };
}
