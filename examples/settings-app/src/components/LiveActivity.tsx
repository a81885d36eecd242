import { createContext, useContext, useState, type ReactNode } from 'react';
import { useSubscription } from '@apollo/client/react';
import { AUDIT_RECORD_ADDED, type AuditRecord } from '../apollo/operations';

const LiveActivityContext = createContext<{ records: AuditRecord[]; connected: boolean }>({ records: [], connected: false });

/**
 * One `auditRecordAdded` subscription for the whole signed-in app (over the WebSocket), so records
 * that arrive while another page is open are there when the audit page opens.
 */
export function LiveActivityProvider({ children }: { children: ReactNode }) {
  const [records, setRecords] = useState<AuditRecord[]>([]);
  const { error, loading } = useSubscription(AUDIT_RECORD_ADDED, {
    onData: ({ data }) => {
      const record = data.data?.auditRecordAdded.record;
      if (record) setRecords((earlier) => [record, ...earlier]);
    },
  });
  return <LiveActivityContext.Provider value={{ records, connected: !loading && !error }}>{children}</LiveActivityContext.Provider>;
}

export function useLiveActivity() {
  return useContext(LiveActivityContext);
}
