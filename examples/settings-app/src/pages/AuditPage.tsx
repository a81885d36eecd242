import { useLiveActivity } from '../components/LiveActivity';

/** The account's audit records as they are appended, newest first, pushed over the WebSocket. */
export function AuditPage() {
  const records = useLiveActivity();
  return (
    <section>
      <h2>Live audit trail</h2>
      {records.length === 0 && <p>Nothing has happened since you signed in.</p>}
      <ul aria-label="Audit records">
        {records.map((record) => (
          <li key={record.id} data-action={record.action} data-resource-type={record.details.resource.type}>
            {new Date(record.executionTime).toLocaleTimeString()} · {record.action} · {record.details.resource.type} {record.details.resource.summary ?? ''}
            {record.rootResource.type !== record.details.resource.type && record.rootResource.summary && ` (of ${record.rootResource.summary})`}
          </li>
        ))}
      </ul>
    </section>
  );
}
