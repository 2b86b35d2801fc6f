import { describe, expect, it } from 'vitest';
import { defineTool, input } from '../src/agents/tools/define-tool.js';
import { ToolInputError, type ToolContext } from '../src/agents/tools/tool.js';

/** defineTool (issue 24): one declaration gives the schema the model sees and the parser of what it sends. */
describe('defineTool', () => {
  const echo = defineTool({
    name: 'echo',
    description: 'Echo.',
    readOnly: true,
    external: false,
    input: {
      text: input.string({ description: 'What to say.' }),
      times: input.integer({ minimum: 1 }).optional(),
      mode: input.string({ enum: ['loud', 'soft'] }).optional(),
      tags: input.strings({ minItems: 1 }).optional(),
    },
    run: ({ text, times = 1, mode }) => {
      if (text === 'refuse') throw new ToolInputError('refused on purpose');
      if (text === 'bug') throw new TypeError('a bug');
      return { content: `${mode === 'loud' ? text.toUpperCase() : text} x${times}` };
    },
  });
  const context = {} as ToolContext;

  it('the schema the model sees is made from the declaration', () => {
    expect(echo.definition.input_schema).toEqual({
      type: 'object',
      properties: {
        text: { type: 'string', description: 'What to say.' },
        times: { type: 'integer', minimum: 1 },
        mode: { type: 'string', enum: ['loud', 'soft'] },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
      },
      required: ['text'],
    });
  });

  it('what the model sends is parsed by the same fields; bad input is a tool error, a bug is thrown', async () => {
    expect(await echo.run({ text: 'hi', times: 2, mode: 'loud' }, context)).toEqual({ content: 'HI x2' });
    expect(await echo.run({}, context)).toEqual({ content: '"text" must be a string', isError: true });
    expect(await echo.run({ text: 'hi', times: 'two' }, context)).toEqual({ content: '"times" must be a number', isError: true });
    expect(await echo.run({ text: 'hi', mode: 'shout' }, context)).toEqual({ content: 'mode must be one of loud, soft; got "shout"', isError: true });
    expect(await echo.run({ text: 'hi', tags: [] }, context)).toEqual({ content: '"tags" needs at least 1 item', isError: true });
    expect(await echo.run({ text: 'refuse' }, context)).toEqual({ content: 'refused on purpose', isError: true });
    await expect(echo.run({ text: 'bug' }, context)).rejects.toThrow('a bug');
  });
});
