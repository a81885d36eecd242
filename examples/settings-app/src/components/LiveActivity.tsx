import { createContext, useContext, useState, type ReactNode } from 'react';
import { useSubscription } from '@apollo/client/react';
import { AUDIT_RECORD_ADDED, type AuditRecord } from '../apollo/operations';

const LiveActivityContext = createContext<AuditRecord[]>([]);

/**
 * One `auditRecordAdded` subscription for the whole signed-in app (over the WebSocket), so records
 * that arrive while another page is open are there when the audit page opens.
 */
export function LiveActivityProvider({ children }: { children: ReactNode }) {
  const [records, setRecords] = useState<AuditRecord[]>([]);
  useSubscription(AUDIT_RECORD_ADDED, {
    onData: ({ data }) => {
      const record = data.data?.auditRecordAdded.record;
      if (record) setRecords((earlier) => [record, ...earlier]);
    },
  });
  return <LiveActivityContext.Provider value={records}>{children}</LiveActivityContext.Provider>;
}

/** The records appended since this tab signed in, newest first. */
export function useLiveActivity(): AuditRecord[] {
  return useContext(LiveActivityContext);
}
