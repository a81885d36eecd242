import type { NextFunction, Request, Response } from 'express';

/** The HTTP faces of the one schema; a WebSocket connection is the fourth way in, with its own transport. */
export type FaceName = 'graphql' | 'rest' | 'scim';

/**
 * One HTTP face: which requests are its, and how it answers an error in its own format. The face a
 * request belongs to is decided once, when the request arrives (`assignFaces`), and read by every
 * later step that answers or records it (`faceOf`), so no step works it out from the path again.
 */
export interface Face {
  readonly name: FaceName;
  /** Whether a request for this path (the full path, before any mount) is this face's. */
  matches(path: string): boolean;
  /**
   * Answers `error` in the face's format: a domain error as the error table says, anything else
   * masked as internal (with the request id to quote).
   */
  answer(res: Response, error: unknown): void;
}

/** Sets `res.locals.face` for the request: the first face that claims its path, else `fallback`. */
export function assignFaces(faces: readonly Face[], fallback: Face) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const path = req.path;
    res.locals.face = faces.find((face) => face.matches(path)) ?? fallback;
    next();
  };
}

export function faceOf(res: Response): Face {
  return res.locals.face as Face;
}
