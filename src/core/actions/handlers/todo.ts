/** `<todo>`: the agent's task list, kept in AgentState so it is recorded with every step. */
import type { AgentState } from '../types';
import type { TodoBody } from '../schema';
import { output, type Handler } from './common';

export function renderTodos(state: AgentState): string {
  if (state.todos.length === 0) return 'Todo list: (empty)';
  const done = state.todos.filter((t) => t.done).length;
  return [`Todo list (${done}/${state.todos.length} done):`, ...state.todos.map((t) => `[${t.done ? 'x' : ' '}] ${t.id}. ${t.content}`)].join('\n');
}

export const todoHandler: Handler = async (action, ctx) => {
  const body = action.body as unknown as TodoBody;
  const state = ctx.state;
  const lines: string[] = [];
  let ok = true;
  const ids = () => (state.todos.length > 0 ? state.todos.map((t) => t.id).join(', ') : 'none');
  for (const op of body.operations) {
    if (op.action === 'add') {
      const item = { id: state.nextTodoId++, content: op.content!, done: false };
      state.todos.push(item);
      lines.push(`Added task ${item.id}: ${item.content}`);
    } else if (op.action === 'view_all') {
      lines.push(renderTodos(state));
    } else {
      const i = state.todos.findIndex((t) => t.id === op.task_id);
      if (i < 0) {
        ok = false;
        lines.push(`Error: no task ${op.task_id} to ${op.action} (existing ids: ${ids()})`);
      } else if (op.action === 'complete') {
        state.todos[i] = { ...state.todos[i]!, done: true };
        lines.push(`Completed task ${op.task_id}: ${state.todos[i]!.content}`);
      } else {
        const [removed] = state.todos.splice(i, 1);
        lines.push(`Deleted task ${op.task_id}: ${removed!.content}`);
      }
    }
  }
  if (body.view_all) lines.push(renderTodos(state));
  return output('todo_output', ctx, lines.join('\n'), '', ok);
};
