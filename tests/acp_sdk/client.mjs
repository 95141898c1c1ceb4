// Drives `rawko acp` with the official ACP TypeScript SDK (@agentclientprotocol/sdk, pinned in
// package.json): a client no one here wrote. tests/acp_sdk.rs runs it as
//
//   node client.mjs RAWKO_BIN PROJECT_DIR HOME_DIR
//
// in a project where `rawko init` ran. Each scenario starts its own `rawko acp` with a scripted
// provider. The last line is `N passed, N failed`; the exit status is 0 only when all passed.

import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, project, home] = process.argv.slice(2);
if (!bin || !project || !home) {
  console.error("usage: node client.mjs RAWKO_BIN PROJECT_DIR HOME_DIR");
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(what, ok, detail) {
  if (ok) {
    passed++;
    console.log(`ok - ${what}`);
  } else {
    failed++;
    console.log(`FAILED - ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

/** Starts `rawko acp --script SCRIPT ...args` and connects the SDK's client to it. */
async function withRawko(script, args, onPermission, body) {
  writeFileSync(join(project, "s.yaml"), script);
  const child = spawn(bin, ["acp", "--script", "s.yaml", ...args], {
    cwd: project,
    env: {
      ...process.env,
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_STATE_HOME: join(home, ".local/state"),
      PI_CODING_AGENT_DIR: join(home, ".pi"),
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const updates = [];
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client()
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => onPermission(params));
  try {
    const timeout = setTimeout(() => {
      console.log("FAILED - the scenario took longer than 60 s");
      child.kill("SIGKILL");
      process.exit(1);
    }, 60_000);
    await app.connectWith(stream, (agent) => body(agent, updates, child));
    clearTimeout(timeout);
  } finally {
    child.stdin.end();
    await new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.on("exit", resolve);
      setTimeout(() => {
        child.kill("SIGKILL");
        resolve();
      }, 10_000);
    });
  }
  return child.exitCode;
}

const text = (updates) =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text")
    .map((u) => u.content.text)
    .join("");

const FEATURE = `
turns:
  - text: "Reading."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - tool_calls:
      - {name: Write, input: {path: rejected.md, content: "no"}}
  - tool_calls:
      - {name: Write, input: {path: plan.md, content: "the plan"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
`;

// 1. Modes, the plan in order, streamed chunks, a permission asked and answered both ways.
{
  const asked = [];
  const answers = ["reject_once", "allow_once"];
  await withRawko(
    FEATURE,
    [],
    (params) => {
      asked.push(params);
      return { outcome: { outcome: "selected", optionId: answers[asked.length - 1] ?? "reject_once" } };
    },
    async (agent, updates) => {
      const init = await agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
        clientInfo: { name: "acp-sdk-test", version: "1" },
      });
      check("initialize names rawko and protocol 1", init.agentInfo?.name === "rawko" && init.protocolVersion === 1, init);
      const session = await agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
      const modes = session.modes?.availableModes.map((m) => m.id) ?? [];
      check("the workflows are the modes, no workflow first", JSON.stringify(modes) === JSON.stringify(["none", "feature"]), modes);
      await agent.request(acp.methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "feature" });
      const result = await agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: "Add a plan" }],
      });
      check("the turn ends end_turn when the workflow completes", result.stopReason === "end_turn", result);
      check(
        "set_mode is followed by a current_mode_update",
        updates.some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "feature"),
      );
      check(
        "the slash commands are offered",
        updates.some(
          (u) =>
            u.sessionUpdate === "available_commands_update" &&
            ["next", "loop", "status", "cancel-workflow", "interrupt"].every((n) => u.availableCommands.some((c) => c.name === n)),
        ),
      );
      const plans = updates.filter((u) => u.sessionUpdate === "plan").map((u) => u.entries.map((e) => e.status));
      const current = plans.map((p) => p.indexOf("in_progress"));
      check("the first plan has the first phase in progress", current[0] === 0, plans[0]);
      check(
        "the plan moves forward one phase at a time",
        current.slice(0, -1).every((c, i) => c === i),
        current,
      );
      check("the last plan has every phase completed", plans.at(-1)?.every((s) => s === "completed"), plans.at(-1));
      check("the plan lists the five flattened phases", plans.every((p) => p.length === 5), plans.length);
      const said = text(updates);
      check("the model's text streams as agent_message_chunk", said.startsWith("Reading.") && said.includes("All done."), said);
      check(
        "context injection is a short thought line",
        updates.some((u) => u.sessionUpdate === "agent_thought_chunk" && u.content.text.startsWith("rawko injected the phase context")),
      );
      const read = updates.find((u) => u.sessionUpdate === "tool_call" && u.kind === "read");
      check("a Read is a read tool_call with its location", read?.locations?.[0]?.path === join(project, "README.md"), read);
      check("two blocked Writes were asked about", asked.length === 2, asked.length);
      check(
        "each permission request has the four options",
        asked.every((a) => a.options.map((o) => o.optionId).join() === "allow_once,allow_always,reject_once,reject_always"),
      );
      check("the phase is in the request's title", asked.every((a) => a.toolCall.title.includes("blocked in phase Plan")), asked[0]?.toolCall);
      check("the rejected Write did not happen", !existsSync(join(project, "rejected.md")));
      check("the allowed Write did", existsSync(join(project, "plan.md")));
      check("the rejection is said in the stream", said.includes("Rejected: Write rejected.md"), said);
      const write = updates.find((u) => u.sessionUpdate === "tool_call" && u.title.startsWith("Write plan.md"));
      check("a Write carries its diff", write?.content?.[0]?.type === "diff" && write.content[0].newText === "the plan", write);
    },
  );
}

// 2. Cancel mid-turn: the turn ends cancelled, the next prompt goes on with the task.
{
  const SLOW = `
turns:
  - text: "Thinking long."
    delay_ms: 20000
  - text: "Done after your message."
`;
  await withRawko(SLOW, [], () => ({ outcome: { outcome: "cancelled" } }), async (agent, updates) => {
    await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    const session = await agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
    const turn = agent.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "Think" }],
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
    const cancelled = await turn;
    check("session/cancel ends the turn cancelled", cancelled.stopReason === "cancelled", cancelled);
    const before = updates.length;
    const next = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "Go on" }],
    });
    check("the next prompt goes on with the task", next.stopReason === "end_turn" && text(updates.slice(before)).includes("Done after your message."), next);
  });
}

// 3. session/load after a SIGKILL of `rawko acp`: the description is replayed, the task goes on.
{
  const SLOW = `
turns:
  - text: "Thinking long."
    delay_ms: 1500
  - text: "Done after your message."
`;
  let sessionId;
  try {
    await withRawko(SLOW, [], () => ({ outcome: { outcome: "cancelled" } }), async (agent, _updates, child) => {
      await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      const session = await agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });
      sessionId = session.sessionId;
      agent
        .request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "Think it over" }] })
        .catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 700));
      child.kill("SIGKILL");
      await new Promise((resolve) => child.on("exit", resolve));
    });
  } catch {
    // The connection ends with the process.
  }
  await withRawko(SLOW, [], () => ({ outcome: { outcome: "cancelled" } }), async (agent, updates) => {
    const init = await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    check("initialize offers loadSession", init.agentCapabilities?.loadSession === true, init.agentCapabilities);
    await agent.request(acp.methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] });
    const replayed = updates.find((u) => u.sessionUpdate === "user_message_chunk");
    check("session/load replays the task's description", replayed?.content?.text === "Think it over", updates);
    const before = updates.length;
    const next = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "Go on" }] });
    check(
      "after the load the task goes on where it was",
      next.stopReason === "end_turn" && text(updates.slice(before)).includes("Thinking long."),
      next,
    );
  });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
