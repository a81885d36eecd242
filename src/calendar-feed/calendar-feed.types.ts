import { Field, ID, InputType, ObjectType } from 'type-graphql';
import type { User } from '../users/user.entity.js';
import { UserType } from '../users/user.type.js';

@InputType({ description: 'The user whose calendar key is replaced.' })
export class RegenerateUserCalendarKeyInput {
  @Field(() => ID, { description: 'The user whose calendar key is replaced: yourself, or anyone with can_update_user.' })
  userId!: string;
}

@ObjectType({ description: 'What regenerateUserCalendarKey changed.' })
export class RegenerateUserCalendarKeyPayload {
  @Field(() => UserType, { description: 'The user, whose `httpCalUrl` / `webCalUrl` carry the new key.' })
  user!: User;

  @Field({ description: 'The new private calendar key (a bearer credential). The previous key stopped working before this answer was sent.' })
  privateUrlKey!: string;
}
