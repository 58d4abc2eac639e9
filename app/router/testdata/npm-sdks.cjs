// Calls the model router with the official npm clients, openai and
// @anthropic-ai/sdk, as an agent built on them does by changing the base
// URL. TestNPMSDKs runs it with NODE_PATH at the packages, ROUTER_URL and
// ROUTER_TOKEN; it prints one JSON object, what each call gave, and the
// test judges it.
const OpenAI = require("openai").default;
const Anthropic = require("@anthropic-ai/sdk").default;

const base = process.env.ROUTER_URL;
const token = process.env.ROUTER_TOKEN;
const messages = [{ role: "user", content: "Weather in Paris?" }];

async function run(name, out, fn) {
  try {
    out[name] = await fn();
  } catch (err) {
    out[name] = { error: String(err && err.message ? err.message : err), status: err && err.status };
  }
}

async function main() {
  const out = {};
  const oa = new OpenAI({ baseURL: base + "/v1", apiKey: token, maxRetries: 0 });
  const oaTools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
  await run("openai", out, async () => {
    const r = await oa.chat.completions.create({ model: "bot", messages });
    return { content: r.choices[0].message.content, totalTokens: r.usage.total_tokens };
  });
  await run("openaiStream", out, async () => {
    let content = "";
    let chunks = 0;
    for await (const c of await oa.chat.completions.create({ model: "bot", messages, stream: true })) {
      chunks++;
      content += (c.choices[0] && c.choices[0].delta.content) || "";
    }
    return { content, chunks };
  });
  await run("openaiTools", out, async () => {
    const r = await oa.chat.completions.create({ model: "bot", messages, tools: oaTools });
    const call = r.choices[0].message.tool_calls[0];
    return { name: call.function.name, arguments: JSON.parse(call.function.arguments), finish: r.choices[0].finish_reason };
  });
  await run("openaiStreamTools", out, async () => {
    const stream = oa.chat.completions.stream({ model: "bot", messages, tools: oaTools });
    const r = await stream.finalChatCompletion();
    const call = r.choices[0].message.tool_calls[0];
    return { name: call.function.name, arguments: JSON.parse(call.function.arguments), finish: r.choices[0].finish_reason };
  });
  await run("openaiError", out, async () => {
    await oa.chat.completions.create({ model: "small", messages });
    return {};
  });

  const an = new Anthropic({ baseURL: base, apiKey: token, maxRetries: 0 });
  const anTools = [{ name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
  await run("anthropic", out, async () => {
    const r = await an.messages.create({ model: "bot", max_tokens: 64, messages });
    return { content: r.content[0].text, stop: r.stop_reason, outputTokens: r.usage.output_tokens };
  });
  await run("anthropicStream", out, async () => {
    let content = "";
    const stream = an.messages.stream({ model: "bot", max_tokens: 64, messages });
    stream.on("text", (t) => { content += t; });
    const r = await stream.finalMessage();
    return { content, stop: r.stop_reason };
  });
  await run("anthropicTools", out, async () => {
    const r = await an.messages.create({ model: "bot", max_tokens: 64, messages, tools: anTools });
    const use = r.content.find((b) => b.type === "tool_use");
    return { name: use.name, input: use.input, stop: r.stop_reason };
  });
  await run("anthropicStreamTools", out, async () => {
    const r = await an.messages.stream({ model: "bot", max_tokens: 64, messages, tools: anTools }).finalMessage();
    const use = r.content.find((b) => b.type === "tool_use");
    return { name: use.name, input: use.input, stop: r.stop_reason };
  });
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
