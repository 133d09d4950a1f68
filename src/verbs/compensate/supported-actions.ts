import type { BoundSource } from '../../db/bind-source.js';
import { actionUnsupported, COMPENSATE_ACTIONS, type CompensateAction } from '../../core/compensate-plan.js';

/** The actions this source's table can take (the picker's menu offers only these). */
export function supportedActions(source: BoundSource): CompensateAction[] {
  const table = {
    profile: source.profile.name,
    kind: source.profile.kind,
    statuses: source.sql.statuses(),
    ...(source.profile.systemActions ? { systemActions: source.profile.systemActions } : {}),
  };
  return COMPENSATE_ACTIONS.filter((action) => actionUnsupported(action, table) === undefined);
}
