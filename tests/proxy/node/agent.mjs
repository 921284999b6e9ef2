// A TypeScript-style agent in plain Node: the npm openai SDK, its base URL from OPENAI_BASE_URL.
import OpenAI from "openai";

const client = new OpenAI({ apiKey: process.env.OPENAI_API_KEY ?? "sk-node-agent-key-0123456789" });
const prompt = process.argv[2] ?? "hello from node";
try {
  const answer = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: prompt }],
  });
  console.log(JSON.stringify({ answer: answer.choices[0].message.content, tokens: answer.usage.total_tokens }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.status ?? ""), message: String(error?.message ?? error) }));
  process.exit(3);
}
