export const USER_ROLES = [
  'owner',
  'admin',
  'user',
  'limited_user',
  'observer',
  'restricted_access',
  'read_only_user',
  'read_only_limited_user',
] as const;

export type UserRole = (typeof USER_ROLES)[number];

export const READ_ONLY_ROLES: ReadonlySet<UserRole> = new Set(['read_only_user', 'read_only_limited_user']);

/** Roles that hold `can_update_user`. */
export const USER_MANAGER_ROLES: ReadonlySet<UserRole> = new Set(['owner', 'admin']);

export function isUserRole(value: unknown): value is UserRole {
  return typeof value === 'string' && (USER_ROLES as readonly string[]).includes(value);
}
