// The npm openai SDK streaming a chat answer: each delta printed as it arrives.
import OpenAI from "openai";

const client = new OpenAI({ apiKey: "sk-node-agent-key-0123456789" });
const stream = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: process.argv[2] ?? "stream this please" }],
  stream: true,
});
let text = "";
for await (const chunk of stream) {
  text += chunk.choices[0]?.delta?.content ?? "";
}
console.log(JSON.stringify({ answer: text }));
